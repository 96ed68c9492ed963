// Workspace paths as every side accepts them: the Files API, the durable manifest and the
// runner's restore all run this one check, so a path that passes can be joined onto a workspace
// directory without leaving it. Pure and zod-free so the browser bundle can use it too.

/** Longest path, in UTF-8 bytes (Linux PATH_MAX is 4096; a workspace sits under some prefix). */
export const MAX_WORKSPACE_PATH_BYTES = 1024;
/** Deepest path, in segments. */
export const MAX_WORKSPACE_PATH_DEPTH = 32;
/** Longest segment, in UTF-8 bytes (NAME_MAX on Linux). */
export const MAX_WORKSPACE_SEGMENT_BYTES = 255;

export type PathCheck = { ok: true; path: string; segments: string[] } | { ok: false; message: string };

const encoder = new TextEncoder();

/**
 * Accepts only a relative, already-normalized path: segments joined by `/`, none empty, `.` or
 * `..`; no leading `/`, no backslash (a separator elsewhere), no NUL or other control character,
 * bounded length and depth. Nothing is normalized here: a path that would need it is refused, so
 * two spellings never name one file.
 */
export function checkWorkspacePath(path: unknown): PathCheck {
  if (typeof path !== 'string') return { ok: false, message: 'must be a string' };
  if (path === '') return { ok: false, message: 'must not be empty' };
  if (encoder.encode(path).length > MAX_WORKSPACE_PATH_BYTES)
    return { ok: false, message: `must be at most ${MAX_WORKSPACE_PATH_BYTES} bytes` };
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (/[\u0000-\u001f\u007f]/.test(path)) return { ok: false, message: 'must not contain control characters' };
  if (path.includes('\\')) return { ok: false, message: 'must use / as the separator, not \\' };
  if (path.startsWith('/')) return { ok: false, message: 'must be relative to the workspace, not absolute' };
  const segments = path.split('/');
  if (segments.length > MAX_WORKSPACE_PATH_DEPTH)
    return { ok: false, message: `must be at most ${MAX_WORKSPACE_PATH_DEPTH} segments deep` };
  for (const s of segments) {
    if (s === '') return { ok: false, message: 'must not contain empty segments (// or a trailing /)' };
    if (s === '.' || s === '..') return { ok: false, message: 'must not contain . or .. segments' };
    if (encoder.encode(s).length > MAX_WORKSPACE_SEGMENT_BYTES)
      return { ok: false, message: `each segment must be at most ${MAX_WORKSPACE_SEGMENT_BYTES} bytes` };
  }
  return { ok: true, path, segments };
}
