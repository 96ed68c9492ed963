import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { basename, isAbsolute, join, relative, sep } from 'node:path';
import { claudeTranscriptPath, TranscriptSchema, type Backend, type Transcript } from '@switchyard/protocol';
import { messageOf, runnerError, type Result } from '../errors.ts';
import { createFileBeneath, openFileBeneath, readAtMost } from '../workspace/beneath.ts';

// A CLI's conversation file, moved between runners through the hub so a new
// container resumes the conversation. Only the file travels; where it lives
// is derived from the restoring runner's own config dir and workspace.

// zlib (~9 ms of CPU to load) loads with the first transcript packed or unpacked, not while the
// runner starts; neither it nor node:util is taken through an ES import, whose namespace would
// load every module behind their lazy exports.
const { promisify } = process.getBuiltinModule('node:util');
const gzipAsync = (raw: Buffer) => promisify(process.getBuiltinModule('node:zlib').gzip)(raw);
const gunzipAsync = (packed: Buffer, options: { maxOutputLength: number }) =>
  promisify(process.getBuiltinModule('node:zlib').gunzip)(packed, options);

/**
 * Kept well under what a hub can hold in one WebSocket message (workerd
 * allows 32 MiB); a bigger transcript is reported, not truncated.
 */
const MAX_TRANSCRIPT_ENCODED = 16 * 1024 * 1024;

/**
 * Largest uncompressed transcript this runner sends or restores. The restore decompresses at most
 * the declared size (and never a declaration above this), so a small gzip that inflates to
 * gigabytes (a decompression bomb from a tampered hub or R2 object) cannot exhaust memory.
 */
export const MAX_TRANSCRIPT_BYTES = 256 * 1024 * 1024;

export interface CliPaths {
  configDir: string;
  workspace: string;
}

/** pi keeps sessions here (spawnSpec passes `--session-dir <configDir>/sessions`). */
function piSessionDir(configDir: string): string {
  return join(configDir, 'sessions');
}

/** The file holding the conversation, or undefined when the CLI has not named one yet. */
export function transcriptFile(
  backend: Backend,
  resumeHandle: string | undefined,
  paths: CliPaths,
): { path: string; resumeId: string } | undefined {
  if (!resumeHandle) return undefined;
  if (backend === 'claude')
    return { path: claudeTranscriptPath(paths.configDir, paths.workspace, resumeHandle), resumeId: resumeHandle };
  return { path: resumeHandle, resumeId: basename(resumeHandle) };
}

/**
 * claude writes its transcript on a debounce, ~100 ms after the turn's
 * `result` line, so reading it at turn.done would miss the turn. Waits until
 * the file has not changed for `quietMs` (or `maxMs` passed).
 */
export async function waitForQuietFile(
  path: string,
  opts: { quietMs: number; maxMs: number; pollMs?: number },
): Promise<void> {
  const poll = opts.pollMs ?? 25;
  const deadline = Date.now() + opts.maxMs;
  let last = '';
  let since = Date.now();
  while (Date.now() < deadline) {
    const s = await stat(path).catch(() => undefined);
    const now = s ? `${s.size}:${s.mtimeMs}` : 'missing';
    if (now !== last) {
      last = now;
      since = Date.now();
    } else if (now !== 'missing' && Date.now() - since >= opts.quietMs) {
      // A missing file is not quiet: on the first turn it has yet to be created.
      return;
    }
    await delay(poll);
  }
}

/** Reads and packs the transcript; `undefined` when there is none on disk yet (no turn has run). */
export async function collectTranscript(
  backend: Backend,
  resumeHandle: string | undefined,
  paths: CliPaths,
): Promise<Result<Transcript | undefined>> {
  const file = transcriptFile(backend, resumeHandle, paths);
  if (!file) return { ok: true, value: undefined };
  let raw: Buffer | { tooLarge: number };
  try {
    raw = await readInside(file.path, paths.configDir, MAX_TRANSCRIPT_BYTES);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { ok: true, value: undefined };
    return {
      ok: false,
      error: runnerError('transcript_unreadable', `cannot read the CLI transcript: ${messageOf(err)}`, true),
    };
  }
  // Refused from its size, before reading: the runner never holds more than the limit (a file
  // still growing is checked again after the read).
  const size = Buffer.isBuffer(raw) ? raw.length : raw.tooLarge;
  if (!Buffer.isBuffer(raw) || size > MAX_TRANSCRIPT_BYTES) {
    return {
      ok: false,
      error: runnerError(
        'transcript_too_large',
        `transcript is ${size} bytes, over the ${MAX_TRANSCRIPT_BYTES} limit; it was not uploaded`,
      ),
    };
  }
  const data = (await gzipAsync(raw)).toString('base64');
  if (data.length > MAX_TRANSCRIPT_ENCODED) {
    return {
      ok: false,
      error: runnerError(
        'transcript_too_large',
        `transcript is ${raw.length} bytes (${data.length} encoded), over the ${MAX_TRANSCRIPT_ENCODED} limit; it was not uploaded`,
      ),
    };
  }
  const transcript: Transcript = {
    backend,
    resumeId: file.resumeId,
    encoding: 'gzip+base64',
    data,
    sha256: sha256(raw),
    bytes: raw.length,
  };
  const checked = TranscriptSchema.safeParse(transcript);
  if (!checked.success)
    return {
      ok: false,
      error: runnerError(
        'transcript_invalid',
        `transcript cannot be sent: ${checked.error.issues[0]?.message ?? 'invalid'}`,
      ),
    };
  return { ok: true, value: checked.data };
}

/**
 * Reads a file the CLI wrote, refusing anything but a regular file inside its config dir, reached
 * without a link: the CLI (another uid in the container) could plant a link to
 * `/proc/self/environ`, the runner's own environment, or swap a folder for one while this reads
 * (beneath.ts opens each folder inside the one before, none through a link).
 */
async function readInside(path: string, dir: string, maxBytes: number): Promise<Buffer | { tooLarge: number }> {
  const fh = await openFileBeneath(dir, configDirSegments(path, dir));
  try {
    const st = await fh.stat();
    if (st.size > maxBytes) return { tooLarge: st.size };
    return (await readAtMost(fh, maxBytes, st.size)) ?? { tooLarge: maxBytes + 1 };
  } finally {
    await fh.close();
  }
}

/** The names from the CLI's config dir down to `path`, which this module derived inside it. */
function configDirSegments(path: string, dir: string): string[] {
  const rel = relative(dir, path);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) throw new Error(`${path} is outside the CLI config dir`);
  return rel.split(sep);
}

/**
 * Writes a transcript from the hub where this runner's CLI will look for it
 * and returns the resume handle to spawn with (claude: session id; pi: file path).
 */
export async function restoreTranscript(
  backend: Backend,
  transcript: Transcript,
  paths: CliPaths,
  /** The mode the CLI's own files get (sandbox.ts `modeForCli`: its group's too in container mode). */
  modeForCli: (mode: number) => number = (mode) => mode,
): Promise<Result<string>> {
  if (transcript.backend !== backend) {
    // Sessions are pinned to their backend; a transcript of the other CLI cannot be resumed.
    return {
      ok: false,
      error: runnerError(
        'transcript_backend_mismatch',
        `transcript is from ${transcript.backend}, this runner runs ${backend}`,
      ),
    };
  }
  if (transcript.bytes > MAX_TRANSCRIPT_BYTES) {
    return {
      ok: false,
      error: runnerError(
        'transcript_too_large',
        `transcript declares ${transcript.bytes} bytes, over the ${MAX_TRANSCRIPT_BYTES} limit; not restored`,
      ),
    };
  }
  let raw: Buffer;
  try {
    // zlib stops (RangeError) as soon as the output would pass the declared size.
    raw = await gunzipAsync(Buffer.from(transcript.data, 'base64'), { maxOutputLength: Math.max(1, transcript.bytes) });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
      return {
        ok: false,
        error: runnerError(
          'transcript_too_large',
          `transcript decompresses to more than its declared ${transcript.bytes} bytes; not restored`,
        ),
      };
    }
    return { ok: false, error: runnerError('transcript_corrupt', `transcript does not decompress: ${messageOf(err)}`) };
  }
  if (raw.length !== transcript.bytes || sha256(raw) !== transcript.sha256) {
    return { ok: false, error: runnerError('transcript_corrupt', 'transcript checksum mismatch') };
  }
  const handle = backend === 'claude' ? transcript.resumeId : join(piSessionDir(paths.configDir), transcript.resumeId);
  const file = transcriptFile(backend, handle, paths);
  if (!file) return { ok: false, error: runnerError('transcript_invalid', 'transcript has no resume id') };
  const content = backend === 'pi' ? rehomePiSession(raw, paths.workspace) : raw;
  try {
    // The CLI may have planted links here (a previous one in this container) and may swap a
    // folder for one while this writes: never write through one (beneath.ts).
    const fh = await createFileBeneath(paths.configDir, configDirSegments(file.path, paths.configDir), {
      folderMode: modeForCli(0o700),
      fileMode: modeForCli(0o600),
      replaceOther: false,
    });
    try {
      await fh.writeFile(content);
    } finally {
      await fh.close();
    }
  } catch (err) {
    return {
      ok: false,
      error: runnerError('transcript_unwritable', `cannot restore the transcript: ${messageOf(err)}`),
    };
  }
  return { ok: true, value: handle };
}

/**
 * pi's session file starts with a header naming the working directory it was
 * created in, and pi 0.73 refuses to resume ("Stored session working
 * directory does not exist") when that path is gone — as it is in a new
 * container. The header is pointed at this runner's workspace; nothing else
 * in the file is touched.
 */
function rehomePiSession(raw: Buffer, workspace: string): Buffer {
  const text = raw.toString('utf8');
  const nl = text.indexOf('\n');
  const first = nl === -1 ? text : text.slice(0, nl);
  let header: unknown;
  try {
    header = JSON.parse(first);
  } catch {
    return raw;
  }
  if (
    typeof header !== 'object' ||
    header === null ||
    (header as { type?: unknown }).type !== 'session' ||
    !('cwd' in header)
  )
    return raw;
  const rehomed = JSON.stringify({ ...header, cwd: workspace });
  return Buffer.from(nl === -1 ? rehomed : `${rehomed}${text.slice(nl)}`, 'utf8');
}

export function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}
