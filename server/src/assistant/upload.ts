import { isUtf8 } from 'node:buffer';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyRequest } from 'fastify';
import { AppError, badRequest, serviceUnavailable } from '../errors.ts';

export const UPLOAD_LIMITS = {
  /** Largest file an operator may upload to the vector store. */
  maxBytes: 20 * 1024 * 1024,
  /**
   * Uploads received at once by this process; one more is refused with 503
   * before its body is read. Each is streamed to a temporary file, and only
   * these few are read back to be stored, so memory stays bounded.
   */
  maxInFlight: 4,
  /** Longest stored file name, extension included. */
  maxFilenameLength: 200,
};

/** Types whose content must be UTF-8 text; anything else sent under their name is refused. */
const TEXT_TYPES = new Set(['.txt', '.md', '.markdown', '.json', '.csv', '.html', '.htm', '.tex']);
/** Binary types and the bytes every such file starts with. */
const SIGNATURES: Record<string, { bytes: Buffer; name: string }> = {
  '.pdf': { bytes: Buffer.from('%PDF-'), name: 'PDF' },
  '.docx': { bytes: Buffer.from('PK\x03\x04', 'latin1'), name: 'Word (.docx)' },
  '.pptx': { bytes: Buffer.from('PK\x03\x04', 'latin1'), name: 'PowerPoint (.pptx)' },
};

/**
 * Control characters (C0, C1), bidirectional overrides and isolates (the
 * right-to-left override turns "gpj.exe" into a name that reads "exe.jpg"),
 * zero-width and other invisible formatting characters.
 */
const UNSAFE_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]/gu;
/** Characters with a meaning in HTML, and path separators. */
const MARKUP_CHARACTERS = /[<>&"'`\\/]/g;

/**
 * The name an uploaded file is stored under: the last path segment, without
 * control, bidi and invisible characters or HTML characters, spaces
 * collapsed, no leading dots, at most UPLOAD_LIMITS.maxFilenameLength
 * characters (the extension kept). Empty when nothing usable is left.
 */
export function sanitizeFilename(raw: string): string {
  const last = raw.split(/[\\/]/).pop() ?? '';
  const cleaned = last
    .toWellFormed()
    .normalize('NFC')
    .replace(/[\t\n\v\f\r]/g, ' ')
    .replace(UNSAFE_CHARACTERS, '')
    .replace(MARKUP_CHARACTERS, '')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^[.\s]+/, '');
  if (cleaned.length <= UPLOAD_LIMITS.maxFilenameLength) return cleaned;
  const extension = path.extname(cleaned).slice(0, 16);
  return `${[...cleaned.slice(0, cleaned.length - extension.length)].slice(0, UPLOAD_LIMITS.maxFilenameLength - extension.length).join('').trimEnd()}${extension}`;
}

/** Counts the uploads this process is receiving, refusing one past the bound. */
export class UploadGate {
  readonly #max: number;
  #inFlight = 0;

  constructor(max = UPLOAD_LIMITS.maxInFlight) {
    this.#max = max;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Takes a place, or throws the 503 to answer; call the returned function when done. */
  enter(): () => void {
    if (this.#inFlight >= this.#max) {
      const error = serviceUnavailable(`${this.#max} uploads are already in progress; try again in a moment`, 'uploads_busy');
      error.headers['retry-after'] = '5';
      // The body still on its way is not read: the connection ends with the reply.
      error.headers.connection = 'close';
      throw error;
    }
    this.#inFlight++;
    let left = false;
    return () => {
      if (!left) this.#inFlight--;
      left = true;
    };
  }
}

export interface ReceivedUpload {
  /** The sanitized name. */
  filename: string;
  bytes: number;
  /** The content, read back from the temporary file. */
  read(): Promise<Buffer>;
  /** Removes the temporary file. */
  dispose(): Promise<void>;
}

const fileRequired = () => new AppError(400, 'file_required', 'Send the file as multipart/form-data in the field "file"', { field: 'file' });

/**
 * Reads a multipart upload of one file in the field "file" (other fields are
 * ignored), streaming it to a temporary file and checking on the way that
 * its content is what its type says. Every way the body can be wrong is a
 * 4xx with a message: bad or missing boundary, a part cut off, no file, two
 * files, too large, empty, binary content under a text type.
 */
export async function receiveUpload(request: FastifyRequest, accepted: readonly string[]): Promise<ReceivedUpload> {
  if (!request.isMultipart()) throw fileRequired();
  const directory = await mkdtemp(path.join(tmpdir(), 'concierge-upload-'));
  const dispose = () => rm(directory, { recursive: true, force: true });
  let check: ContentCheck | undefined;
  try {
    let received: { filename: string; bytes: number; file: string } | undefined;
    const parts = request.parts({ limits: { fileSize: UPLOAD_LIMITS.maxBytes, files: 1, fields: 5, parts: 6 } });
    for await (const part of parts) {
      if (part.type !== 'file') continue;
      if (part.fieldname !== 'file') throw fileRequired();
      const filename = sanitizeFilename(part.filename ?? '');
      const extension = path.extname(filename).toLowerCase();
      if (!filename || filename === extension || !accepted.includes(extension)) {
        throw new AppError(415, 'unsupported_file_type', `File type must be one of ${accepted.join(', ')}`, { field: 'file' });
      }
      const file = path.join(directory, 'upload');
      check = new ContentCheck(filename, extension);
      await pipeline(part.file, check, createWriteStream(file));
      if (part.file.truncated) {
        throw new AppError(413, 'file_too_large', `File is too large (at most ${UPLOAD_LIMITS.maxBytes / 1024 / 1024} MB)`, { field: 'file' });
      }
      received = { filename, bytes: check.bytes, file };
    }
    if (!received) throw fileRequired();
    if (received.bytes === 0) throw new AppError(400, 'file_empty', 'File is empty', { field: 'file' });
    const { filename, bytes, file } = received;
    return { filename, bytes, read: () => readFile(file), dispose };
  } catch (error) {
    await dispose();
    // The content check's refusal, when there was one, is the reason, whatever the parser said after it.
    throw multipartError(check?.failure ?? error);
  }
}

/** The parser's errors as the 4xx they are; ours pass through. */
function multipartError(error: unknown): unknown {
  if (error instanceof AppError) return error;
  const { code, message, statusCode } = error as { code?: string; message?: string; statusCode?: number };
  switch (code) {
    case 'FST_FILES_LIMIT':
      return new AppError(400, 'one_file_only', 'Send one file per upload, in the field "file"', { field: 'file' });
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return new AppError(400, 'too_many_parts', 'The upload has too many fields: send only the file, in the field "file"');
    case 'FST_REQ_FILE_TOO_LARGE':
      return new AppError(413, 'file_too_large', `File is too large (at most ${UPLOAD_LIMITS.maxBytes / 1024 / 1024} MB)`, { field: 'file' });
    case 'FST_PROTO_VIOLATION':
      return badRequest('The upload has a field name that is not allowed', 'malformed_multipart');
  }
  if (statusCode !== undefined && statusCode >= 400 && statusCode < 500) return error;
  // Busboy's own errors: no boundary, a malformed or cut-off part, the request ending early.
  const reason = (message ?? 'unreadable').replace(/^Multipart: /, '');
  return badRequest(`The upload is not well-formed multipart/form-data (${reason.slice(0, 120)})`, 'malformed_multipart');
}

/**
 * Passes the file through while checking its content against its type:
 * text types must be UTF-8 without NUL bytes (checked across chunk
 * boundaries), PDF and Office files must start with their signature.
 */
class ContentCheck extends Transform {
  bytes = 0;
  /** Why the content was refused, once it was. */
  failure: AppError | undefined;
  readonly #filename: string;
  readonly #extension: string;
  readonly #text: boolean;
  #head = Buffer.alloc(0);
  #carry = Buffer.alloc(0);

  constructor(filename: string, extension: string) {
    super();
    this.#filename = filename;
    this.#extension = extension;
    this.#text = TEXT_TYPES.has(extension);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.#head.length < 8) this.#head = Buffer.concat([this.#head, chunk.subarray(0, 8)]);
    if (this.#text) {
      if (chunk.includes(0)) return callback(this.#refuse(this.#notText()));
      const joined = this.#carry.length ? Buffer.concat([this.#carry, chunk]) : chunk;
      const tail = incompleteTail(joined);
      if (!isUtf8(joined.subarray(0, joined.length - tail))) return callback(this.#refuse(this.#notText()));
      this.#carry = Buffer.from(joined.subarray(joined.length - tail));
    } else if (SIGNATURES[this.#extension] && this.#head.length >= 8 && !this.#signed()) {
      return callback(this.#refuse(this.#wrongSignature()));
    }
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    if (this.#text && this.#carry.length > 0) return callback(this.#refuse(this.#notText()));
    if (SIGNATURES[this.#extension] && this.bytes > 0 && !this.#signed()) return callback(this.#refuse(this.#wrongSignature()));
    callback();
  }

  #refuse(error: AppError): AppError {
    this.failure = error;
    return error;
  }

  #signed(): boolean {
    const signature = SIGNATURES[this.#extension]!.bytes;
    return this.#head.subarray(0, signature.length).equals(signature);
  }

  #notText() {
    return new AppError(
      400,
      'not_text',
      `${this.#filename} is not text: a ${this.#extension} file must be UTF-8 text, and this one has binary content`,
      { field: 'file' },
    );
  }

  #wrongSignature() {
    const { name } = SIGNATURES[this.#extension]!;
    return new AppError(400, 'content_mismatch', `${this.#filename} is not a ${name} file`, { field: 'file' });
  }
}

/** How many bytes at the end of `buffer` begin a UTF-8 sequence that the next chunk completes. */
function incompleteTail(buffer: Buffer): number {
  for (let back = 1; back <= Math.min(3, buffer.length); back++) {
    const byte = buffer[buffer.length - back]!;
    if ((byte & 0xc0) === 0x80) continue; // a continuation byte: look further back for its lead
    const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return length > back ? back : 0;
  }
  return 0;
}
