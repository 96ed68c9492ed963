// The workspace diff (`GET /api/sessions/:id/diff`, git diff text) as the Changes view shows it:
// per file, what happened to it, +/− counts and numbered lines. jsdiff parses the text (git's
// headers, quoted names, binary lines); this arranges it.
import { parsePatch } from 'diff';

export type ChangeKind = 'added' | 'deleted' | 'modified' | 'mode';

export interface DiffLine {
  kind: 'add' | 'del' | 'ctx' | 'note';
  text: string;
  /** Line numbers in the old and new file (absent on the side the line is not in). */
  old?: number;
  new?: number;
}

export interface FileChange {
  path: string;
  kind: ChangeKind;
  /** Binary, or over the server's size cap: no lines. */
  binary: boolean;
  /** `100644 → 100755` when the executable bit changed. */
  modeChange: string | null;
  additions: number;
  deletions: number;
  hunks: { header: string; lines: DiffLine[] }[];
}

export interface WorkspaceChanges {
  files: FileChange[];
  /** The server's trailer when the text was cut at its size cap. */
  truncated: string | null;
}

const strip = (name: string | undefined) => (name ?? '').replace(/^[ab]\//, '');

export function parseWorkspaceDiff(text: string): WorkspaceChanges {
  const truncated = text.split('\n').find((l) => l.startsWith('# Diff truncated')) ?? null;
  if (text.trim() === '') return { files: [], truncated };
  const files = parsePatch(text).map((p): FileChange => {
    const path = p.isDelete ? strip(p.oldFileName) : strip(p.newFileName);
    const content = p.hunks.length > 0 || p.isBinary === true;
    const kind: ChangeKind = p.isCreate ? 'added' : p.isDelete ? 'deleted' : content ? 'modified' : 'mode';
    let additions = 0;
    let deletions = 0;
    const hunks = p.hunks.map((h) => {
      let o = h.oldStart;
      let n = h.newStart;
      const lines = h.lines.map((raw): DiffLine => {
        const body = raw.slice(1);
        if (raw.startsWith('+')) {
          additions++;
          return { kind: 'add', text: body, new: n++ };
        }
        if (raw.startsWith('-')) {
          deletions++;
          return { kind: 'del', text: body, old: o++ };
        }
        if (raw.startsWith('\\')) return { kind: 'note', text: raw.slice(2) };
        return { kind: 'ctx', text: body, old: o++, new: n++ };
      });
      // jsdiff counts an empty side from 1; git prints it as 0.
      const start = (at: number, count: number) => (count === 0 ? at - 1 : at);
      return {
        header: `@@ -${start(h.oldStart, h.oldLines)},${h.oldLines} +${start(h.newStart, h.newLines)},${h.newLines} @@`,
        lines,
      };
    });
    const modeChange =
      !p.isCreate && !p.isDelete && p.oldMode !== undefined && p.newMode !== undefined && p.oldMode !== p.newMode
        ? `${p.oldMode} → ${p.newMode}`
        : null;
    return { path, kind, binary: p.isBinary === true, modeChange, additions, deletions, hunks };
  });
  return { files, truncated };
}

/** Most lines the view renders for one file; the rest is in the downloadable .diff. */
const MAX_SHOWN_LINES = 2000;

/** The file's hunks cut to `max` lines, and how many lines were left out. */
export function clipHunks(
  hunks: FileChange['hunks'],
  max = MAX_SHOWN_LINES,
): { hunks: FileChange['hunks']; hidden: number } {
  const out: FileChange['hunks'] = [];
  let left = max;
  let hidden = 0;
  for (const h of hunks) {
    if (left <= 0) {
      hidden += h.lines.length;
      continue;
    }
    out.push(h.lines.length <= left ? h : { header: h.header, lines: h.lines.slice(0, left) });
    hidden += Math.max(0, h.lines.length - left);
    left -= h.lines.length;
  }
  return { hunks: out, hidden };
}

export function diffUrl(sessionId: string): string {
  return `/api/sessions/${sessionId}/diff`;
}
