// The ES module entry of lockd-client. The implementation is CommonJS
// (index.cjs), so that require() works on every Node that package.json's
// engines allows; import and require() then load the very same module:
// one set of classes (instanceof holds across both), one session pool.
import lockd from './index.cjs';

export const {
  Client,
  Lock,
  Leadership,
  Observer,
  LockdError,
  LockTimeoutError,
  QuorumError,
  LockLostError,
  LockdConnectionError,
  InvalidArgumentError,
} = lockd;
export default lockd.Client;
