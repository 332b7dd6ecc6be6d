import { createRequire } from 'node:module';

/** What the shim touches of @fastify/busboy's Dicer (deps/dicer/lib/Dicer.js). */
interface DicerInternals {
  /** Set while Dicer emits its own 'finish' for the form (the closing delimiter seen, every part ended). */
  _realFinish: boolean;
  /** Calls back the write that a full part buffer paused, if there is one. */
  _unpause(): void;
  emit(event: string | symbol, ...args: unknown[]): boolean;
}

const RELEASES = Symbol.for('concierge.multipart-finish');

/**
 * Fixes a hang in the multipart parser under @fastify/multipart
 * (@fastify/busboy 3.2.6, the latest release): a form whose last part ends
 * and whose closing delimiter arrives in the same chunk as more of that
 * part's bytes than the part's buffer holds (16 KB by default) never
 * finishes. When that part's data overflows its buffer, Dicer holds the
 * chunk's write callback until the part is read from again. But once the
 * part has ended it is never read from again. When the part then drains,
 * Dicer announces the form's end without calling back that write. The
 * parser never finishes. The request never gets an answer, and it keeps
 * one of the upload route's four places for good. It happens with the
 * parts that busboy skips itself and that nothing reads: those without a
 * Content-Disposition, those with a bare line break in their headers, and
 * those past the files or parts limit. A file handed to the route is read
 * through busboy's own stream, so a slow reader there does not cause it.
 *
 * The fix calls back the paused write just before Dicer announces that end.
 * By then everything the form held has been parsed, and a later write is
 * only discarded. Returns whether the parser was patched. It returns false
 * when busboy no longer has the shape this relies on: the route then logs
 * a warning, and upload.test.ts's cases of parts the parser skips fail.
 */
export function releaseWritesAtMultipartEnd(): boolean {
  const fromMultipart = createRequire(createRequire(import.meta.url).resolve('@fastify/multipart'));
  const { Dicer } = fromMultipart('@fastify/busboy') as { Dicer?: { prototype: DicerInternals & { [RELEASES]?: true } } };
  const prototype = Dicer?.prototype;
  if (!prototype || typeof prototype._unpause !== 'function' || typeof prototype.emit !== 'function') return false;
  if (prototype[RELEASES]) return true;
  const emit = prototype.emit;
  prototype.emit = function (this: DicerInternals, event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'finish' && this._realFinish) this._unpause();
    return emit.call(this, event, ...args);
  };
  prototype[RELEASES] = true;
  return true;
}
