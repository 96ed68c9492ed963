import { formatPatch, type StructuredPatch, type StructuredPatchHunk, structuredPatch } from 'diff';

// The workspace diff (docs/DESIGN.md "Workspaces", Diff): what changed between two manifests, as
// the text `git diff` would print, so `git apply` takes it. Pure but for `read`, which fetches a
// blob's bytes; a path whose sha256 and executable bit are unchanged is never read. jsdiff does
// the line diff and the git headers; the binary line and the bounds are ours.

/** A file as the diff sees it: content by name, and the owner-execute bit. */
export interface DiffFile {
  path: string;
  sha256: string;
  size: number;
  executable: boolean;
}

export interface DiffLimits {
  /** A side larger than this is not read; the file is shown as binary. */
  maxFileBytes: number;
  /** The text stops before the file that would take it past this, with a trailer line. */
  maxDiffBytes: number;
  /** Past this many changed lines a file is shown as a whole replacement (bounds Myers' cost). */
  maxEditLength: number;
  /**
   * Myers' work is about (lines on both sides) × (edits): a long file gets a lower edit bound so
   * that product stays under this, and one file's diff costs about the same CPU whatever its size.
   */
  maxEditWork: number;
}

export const DIFF_LIMITS: DiffLimits = {
  maxFileBytes: 1024 * 1024,
  maxDiffBytes: 4 * 1024 * 1024,
  maxEditLength: 2000,
  maxEditWork: 4_000_000,
};

export interface WorkspaceDiff {
  text: string;
  /** Changed files in the text. */
  files: number;
  /** Changed files left out by maxDiffBytes. */
  omitted: number;
}

/** Contents are read in batches of at most this many bytes and files (bounds memory; few calls). */
export const BATCH_BYTES = 8 * 1024 * 1024;
const BATCH_FILES = 256;
/** Git's own test: a NUL in the first 8000 bytes makes a file binary. */
const BINARY_PROBE_BYTES = 8000;

/** Git tracks nothing inside a `.git` folder (the clone's own repository, a submodule's). */
function inDiff(path: string): boolean {
  return !path.split('/').includes('.git');
}

type Change = { path: string; before: DiffFile | undefined; after: DiffFile | undefined };

/** Paths whose content or executable bit differ, in path order; `only` limits it to one path. */
function changedPaths(before: DiffFile[], after: DiffFile[], only?: string): Change[] {
  const old = new Map(before.map((f) => [f.path, f]));
  const now = new Map(after.map((f) => [f.path, f]));
  const paths = [...new Set([...old.keys(), ...now.keys()])]
    .filter((p) => inDiff(p) && (only === undefined || p === only))
    .sort();
  const out: Change[] = [];
  for (const path of paths) {
    const b = old.get(path);
    const a = now.get(path);
    if (b !== undefined && a !== undefined && b.sha256 === a.sha256 && b.executable === a.executable) continue;
    out.push({ path, before: b, after: a });
  }
  return out;
}

/** Text, or null when git would call it binary: a NUL near the start, or not UTF-8. */
export function asText(bytes: Uint8Array): string | null {
  if (bytes.subarray(0, BINARY_PROBE_BYTES).includes(0)) return null;
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return null;
  }
}

/** A name as git prints it: C-quoted when it holds `"`, `\`, a control or a non-ASCII byte. */
export function gitQuote(name: string): string {
  if (!/[^\x20-\x7e]|["\\]/.test(name)) return name;
  let out = '"';
  for (const b of new TextEncoder().encode(name)) {
    if (b === 0x22 || b === 0x5c) out += `\\${String.fromCharCode(b)}`;
    else if (b < 0x20 || b > 0x7e) out += `\\${b.toString(8).padStart(3, '0')}`;
    else out += String.fromCharCode(b);
  }
  return `${out}"`;
}

const mode = (f: DiffFile) => (f.executable ? '100755' : '100644');

function countLines(text: string): number {
  let n = 1;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/** Every line removed, then every line added: what a file too changed for Myers becomes. */
function replacementHunk(oldText: string, newText: string): StructuredPatchHunk {
  const side = (text: string, sign: string) => {
    if (text === '') return [];
    const lines = text.split('\n');
    const noEol = lines.at(-1) !== '';
    if (!noEol) lines.pop();
    const out = lines.map((l) => sign + l);
    if (noEol) out.push('\\ No newline at end of file');
    return out;
  };
  const removed = side(oldText, '-');
  const added = side(newText, '+');
  const count = (ls: string[]) => ls.filter((l) => !l.startsWith('\\')).length;
  return { oldStart: 1, oldLines: count(removed), newStart: 1, newLines: count(added), lines: [...removed, ...added] };
}

function fileDiff(c: Change, oldBytes: Uint8Array | null, newBytes: Uint8Array | null, limits: DiffLimits): string {
  const patch: StructuredPatch = {
    oldFileName: c.before === undefined ? '/dev/null' : `a/${c.path}`,
    newFileName: c.after === undefined ? '/dev/null' : `b/${c.path}`,
    oldHeader: undefined,
    newHeader: undefined,
    hunks: [],
    isGit: true,
  };
  if (c.before === undefined && c.after !== undefined) {
    patch.isCreate = true;
    patch.newMode = mode(c.after);
  } else if (c.after === undefined && c.before !== undefined) {
    patch.isDelete = true;
    patch.oldMode = mode(c.before);
  } else if (c.before !== undefined && c.after !== undefined && c.before.executable !== c.after.executable) {
    patch.oldMode = mode(c.before);
    patch.newMode = mode(c.after);
  }
  const sameContent = c.before !== undefined && c.after !== undefined && c.before.sha256 === c.after.sha256;
  if (sameContent) return formatPatch(patch);
  const oldText = oldBytes === null ? (c.before === undefined ? '' : null) : asText(oldBytes);
  const newText = newBytes === null ? (c.after === undefined ? '' : null) : asText(newBytes);
  if (oldText === null || newText === null) {
    const a = c.before === undefined ? '/dev/null' : gitQuote(`a/${c.path}`);
    const b = c.after === undefined ? '/dev/null' : gitQuote(`b/${c.path}`);
    return `${formatPatch(patch)}Binary files ${a} and ${b} differ\n`;
  }
  const lineCount = countLines(oldText) + countLines(newText);
  const maxEditLength = Math.min(limits.maxEditLength, Math.floor(limits.maxEditWork / lineCount));
  const lines = structuredPatch(
    patch.oldFileName ?? '',
    patch.newFileName ?? '',
    oldText,
    newText,
    undefined,
    undefined,
    { context: 3, maxEditLength },
  );
  patch.hunks = lines?.hunks ?? [replacementHunk(oldText, newText)];
  return formatPatch(patch);
}

/**
 * The unified diff from `before` to `after`. Each changed side up to `maxFileBytes` is read once,
 * through `read` (contents in the order asked), in path-ordered batches of at most BATCH_BYTES and
 * BATCH_FILES; reading stops once the text is full.
 */
export async function workspaceDiff(
  before: DiffFile[],
  after: DiffFile[],
  read: (sha256s: string[]) => Promise<Uint8Array[]>,
  opts: { path?: string; limits?: DiffLimits } = {},
): Promise<WorkspaceDiff> {
  const limits = opts.limits ?? DIFF_LIMITS;
  const changes = changedPaths(before, after, opts.path);
  /** The side to read, or null: absent, too large (either side), or the same content as the other. */
  const wanted = (f: DiffFile | undefined, other: DiffFile | undefined): DiffFile | null => {
    if (f === undefined || f.size > limits.maxFileBytes || (other !== undefined && other.size > limits.maxFileBytes))
      return null;
    return other !== undefined && other.sha256 === f.sha256 ? null : f;
  };
  const encoder = new TextEncoder();
  const parts: string[] = [];
  let bytes = 0;
  let at = 0;
  while (at < changes.length) {
    // The next batch: whole files, at least one, within the byte and file bounds.
    const batch: Array<{ c: Change; old: DiffFile | null; now: DiffFile | null }> = [];
    let batchBytes = 0;
    while (at < changes.length && batch.length < BATCH_FILES) {
      const c = changes[at] as Change;
      const old = wanted(c.before, c.after);
      const now = wanted(c.after, c.before);
      const size = (old?.size ?? 0) + (now?.size ?? 0);
      if (batch.length > 0 && batchBytes + size > BATCH_BYTES) break;
      batch.push({ c, old, now });
      batchBytes += size;
      at++;
    }
    const shas = [...new Set(batch.flatMap((b) => [b.old?.sha256, b.now?.sha256].filter((x) => x !== undefined)))];
    const got = shas.length === 0 ? [] : await read(shas);
    const content = new Map(shas.map((sha, i) => [sha, got[i]]));
    for (const { c, old, now } of batch) {
      const text = fileDiff(
        c,
        old === null ? null : (content.get(old.sha256) ?? null),
        now === null ? null : (content.get(now.sha256) ?? null),
        limits,
      );
      const size = encoder.encode(text).length;
      if (bytes + size > limits.maxDiffBytes) {
        const omitted = changes.length - parts.length;
        parts.push(
          `# Diff truncated at ${limits.maxDiffBytes} bytes: ${omitted} more changed file(s) not shown, starting with ${gitQuote(c.path)}\n`,
        );
        return { text: parts.join(''), files: parts.length - 1, omitted };
      }
      bytes += size;
      parts.push(text);
    }
  }
  return { text: parts.join(''), files: parts.length, omitted: 0 };
}
