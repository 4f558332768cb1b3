// Type declarations of lockd-client. This file types the CommonJS entry
// (index.cjs, for require()); index.d.ts gives the same to import.

/** "host:port", "[::1]:7390", "unix:/path", several as "h1:p,h2:p", or an array. */
export type Addresses = string | readonly string[];

export interface ClientOptions {
  /** Sent with AUTH on every connection. */
  password?: string;
  /** true, or tls.connect options. */
  tls?: boolean | { [option: string]: unknown };
  /** Resumable sessions (protocol 1.2); default true. */
  resume?: boolean;
  /** The local deadline and its HELD heartbeat; default true. */
  heartbeat?: boolean;
  /** The grace of a resumable session, ms; default lockd's. */
  graceMs?: number;
  /** Idle sessions kept; default 16. */
  maxIdle?: number;
  /** The longest key or value; default 256. */
  maxLen?: number;
  /** ms; default 5000. */
  connectTimeout?: number;
}

export interface ClientConfig extends ClientOptions {
  addresses?: Addresses;
}

export interface AcquireOptions {
  /** ms to wait; without it, without limit; 0 is one attempt. */
  wait?: number;
  /** A fixed lease, ms (lock.extend renews it); without it lockd renews. */
  ttl?: number;
  shared?: boolean;
  permits?: number;
  /** Aborts the wait; the session is ended, nothing stays held. */
  signal?: AbortSignal;
  onLost?: (err: LockLostError, lock: Lock) => void;
}

export interface TryAcquireOptions {
  ttl?: number;
  shared?: boolean;
  permits?: number;
  signal?: AbortSignal;
  onLost?: (err: LockLostError, lock: Lock) => void;
}

export interface CampaignOptions {
  wait?: number;
  signal?: AbortSignal;
  onLost?: (err: LockLostError, leadership: Leadership) => void;
}

export interface StatusOptions {
  permits?: number;
}

export type Status =
  | { state: 'FREE' }
  | { state: 'HELD'; ttlMs: number; waiters: number }
  | { state: 'SHARED'; holders: number; ttlMs: number; waiters: number }
  | { state: 'PERMITS'; held: number; permits: number; waiters: number };

/** A leader: value is null when a plain lock holds the name. */
export interface Election {
  fence: bigint;
  value: string | null;
}

/** What observe() returns: iterate it, await it (the Observer), close it. */
export interface Observation extends AsyncIterable<Election | null>, PromiseLike<Observer> {
  close(): Promise<void>;
}

export interface WhoOptions {
  /** Rejects the call at once with its reason (the session is kept). */
  signal?: AbortSignal;
}

/** One holder of a key, as WHO (protocol 1.4) tells it. */
export interface Holder {
  /** The hold's fence on its own lockd; elsewhere the key's latest, no lower. */
  readonly fence: bigint;
  readonly kind: 'exclusive' | 'shared' | 'permit';
  /** The permit held (i of permit=i/n); null unless kind is 'permit'. */
  readonly permit: number | null;
  /** n of permit=i/n; null unless kind is 'permit', or when lockd does not know n. */
  readonly permits: number | null;
  /** The holding lockd's name; '-' when no master knows it. */
  readonly lockd: string;
  /** The client's address ('-' while detached); null when the hold is on another lockd than the one asked. */
  readonly client: string | null;
  /** The resumable session's id ('-' for a plain session); null as client. */
  readonly session: string | null;
  /** ms since the grant (or the adoption); null as client. */
  readonly heldMs: number | null;
}

/** The key is in a lock-delay (protocol 1.4). */
export interface Delayed {
  readonly msLeft: number;
  /** The key's latest fence. */
  readonly fence: bigint;
}

/** What who() answers: a free key has no holders and delayed null. */
export interface Who {
  readonly holders: readonly Holder[];
  readonly delayed: Delayed | null;
}

/** A granted lock, shared hold or permit. */
export declare class Lock {
  protected constructor();
  readonly key: string;
  /** Grows with every grant of the key, across every lockd on the same masters. */
  readonly fence: bigint;
  readonly released: boolean;
  /** Aborted, with a LockLostError as its reason, once the hold is lost. */
  readonly signal: AbortSignal;
  readonly lost: boolean;
  /** Throws the LockLostError once the hold is lost. */
  check(): void;
  /** A new lease of ms, for a lock taken with ttl. */
  extend(ms: number): Promise<void>;
  /** Rejects with the LockLostError when the hold was lost. */
  release(): Promise<void>;
}

/** A won election (protocol 1.3). */
export declare class Leadership extends Lock {
  readonly name: string;
  readonly value: string;
  proclaim(value: string): Promise<void>;
  resign(): Promise<void>;
}

/** The changes of one election's leader, current state first. */
export declare class Observer implements AsyncIterableIterator<Election | null> {
  protected constructor();
  readonly name: string;
  readonly closed: boolean;
  next(): Promise<IteratorResult<Election | null, undefined>>;
  return(): Promise<IteratorResult<Election | null, undefined>>;
  [Symbol.asyncIterator](): this;
  close(): Promise<void>;
}

export declare class Client {
  constructor(addresses?: Addresses, opts?: ClientOptions);
  constructor(config: ClientConfig);
  /** A client whose first session is open (a wrong address fails here). */
  static connect(addresses?: Addresses, opts?: ClientOptions): Promise<Client>;
  static connect(config: ClientConfig): Promise<Client>;
  readonly closed: boolean;
  acquire(key: string, opts?: AcquireOptions): Promise<Lock>;
  /** A Lock, or null when the key is busy. */
  tryAcquire(key: string, opts?: TryAcquireOptions): Promise<Lock | null>;
  using<T>(key: string, fn: (signal: AbortSignal, lock: Lock) => T | PromiseLike<T>): Promise<T>;
  using<T>(key: string, opts: AcquireOptions, fn: (signal: AbortSignal, lock: Lock) => T | PromiseLike<T>): Promise<T>;
  status(key: string, opts?: StatusOptions): Promise<Status>;
  ping(): Promise<boolean>;
  /** lockd's STATS, name -> value. */
  stats(): Promise<Record<string, string>>;
  campaign(name: string, value: string, opts?: CampaignOptions): Promise<Leadership>;
  leader(name: string): Promise<Election | null>;
  /** Who holds key (protocol 1.4); rejects with QuorumError without a majority. */
  who(key: string, opts?: WhoOptions): Promise<Who>;
  observe(name: string): Observation;
  /** Ends every session; lockd releases their holds. */
  close(): Promise<void>;
}

/** Every error of the library: code is lockd's (QUORUM, NOTHELD, ...) or the library's (TIMEOUT, LOST, CONNECTION, INVALID). */
export declare class LockdError extends Error {
  constructor(code: string, text?: string, name?: string);
  readonly code: string;
  readonly text: string;
}

/** The wait passed (lockd answered TIMEOUT). */
export declare class LockTimeoutError extends LockdError {
  constructor(text?: string);
}

/** No majority of the Redis masters answered (ERR QUORUM). */
export declare class QuorumError extends LockdError {
  constructor(text?: string);
}

/** A hold was lost: LOST, the end of its session, or its local deadline. */
export declare class LockLostError extends LockdError {
  constructor(text?: string);
}

/** No lockd reachable, or the session ended under a request. */
export declare class LockdConnectionError extends LockdError {
  constructor(text?: string);
}

/** Refused before anything was sent (a bad key, number or option). */
export declare class InvalidArgumentError extends LockdError {
  constructor(text: string);
}

export default Client;
