// The errors of the lockd client: one base class, one class per outcome an
// application handles differently. code is the reply's code (QUORUM,
// NOTHELD, ...) or a client-side one (TIMEOUT, LOST, CONNECTION, INVALID);
// text is the rest of the reply line.
'use strict';

class LockdError extends Error {
  constructor(code, text = '', name = 'LockdError') {
    super(`${code} ${text}`.trim());
    this.name = name;
    this.code = code;
    this.text = text;
  }
}

/** The wait passed before the lock was granted (lockd answered TIMEOUT). */
class LockTimeoutError extends LockdError {
  constructor(text = 'wait passed') {
    super('TIMEOUT', text, 'LockTimeoutError');
  }
}

/** No majority of the Redis masters answered in time (ERR QUORUM). */
class QuorumError extends LockdError {
  constructor(text = '') {
    super('QUORUM', text, 'QuorumError');
  }
}

/** A held lock or leadership is no longer held (LOST, or the session ended). */
class LockLostError extends LockdError {
  constructor(text = 'lock lost') {
    super('LOST', text, 'LockLostError');
  }
}

/** No lockd could be reached, or the session ended under a request. */
class LockdConnectionError extends LockdError {
  constructor(text = 'connection lost') {
    super('CONNECTION', text, 'LockdConnectionError');
  }
}

/** Refused before anything was sent: a key, value or number that lockd
 * would reject or that could not be sent as one request word. */
class InvalidArgumentError extends LockdError {
  constructor(text) {
    super('INVALID', text, 'InvalidArgumentError');
  }
}

/** The error for an `ERR CODE text` reply line. */
function fromReply(line) {
  const m = /^ERR (\S+) ?(.*)$/.exec(line);
  const code = m ? m[1] : 'UNKNOWN';
  const text = m ? m[2] : line;
  if (code === 'QUORUM') return new QuorumError(text);
  return new LockdError(code, text);
}

module.exports = {
  LockdError,
  LockTimeoutError,
  QuorumError,
  LockLostError,
  LockdConnectionError,
  InvalidArgumentError,
  fromReply,
};
