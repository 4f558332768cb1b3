// Type declarations of lockd-client for import: the same as require()'s
// (index.d.cts), since index.js re-exports index.cjs.
export * from './index.cjs';
import { Client } from './index.cjs';
export default Client;
