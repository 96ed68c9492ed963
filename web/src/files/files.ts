// Pure helpers of the files panel: URLs for workspace paths, the folder tree, which files can be
// shown as text, which chosen files are over the server's size limit. Paths are checked by the
// server; here they are only encoded and arranged.
import { formatBytes } from '../ui/format.ts';

/** The API URL of a workspace file: each segment percent-encoded, the slashes kept. */
export function fileUrl(sessionId: string, path: string): string {
  return `/api/sessions/${sessionId}/files/${path.split('/').map(encodeURIComponent).join('/')}`;
}

export function archiveUrl(sessionId: string): string {
  return `/api/sessions/${sessionId}/archive`;
}

export interface FileRow {
  path: string;
  size: number;
  modifiedAt: string;
}

/** One line of the tree: a folder (with the bytes under it) or a file, indented by depth. */
export type TreeLine =
  | { kind: 'folder'; path: string; name: string; depth: number; size: number }
  | { kind: 'file'; path: string; name: string; depth: number; size: number; modifiedAt: string };

/** The flat list as a tree, folders before files, each level sorted by name. */
export function fileTree(files: FileRow[]): TreeLine[] {
  interface Node {
    folders: Map<string, Node>;
    files: FileRow[];
    size: number;
  }
  const root: Node = { folders: new Map(), files: [], size: 0 };
  for (const f of files) {
    const parts = f.path.split('/');
    let node = root;
    node.size += f.size;
    for (const part of parts.slice(0, -1)) {
      let next = node.folders.get(part);
      if (next === undefined) {
        next = { folders: new Map(), files: [], size: 0 };
        node.folders.set(part, next);
      }
      next.size += f.size;
      node = next;
    }
    node.files.push(f);
  }
  const out: TreeLine[] = [];
  const walk = (node: Node, prefix: string, depth: number) => {
    for (const name of [...node.folders.keys()].sort()) {
      const child = node.folders.get(name) as Node;
      const path = prefix === '' ? name : `${prefix}/${name}`;
      out.push({ kind: 'folder', path, name, depth, size: child.size });
      walk(child, path, depth + 1);
    }
    for (const f of [...node.files].sort((a, b) => (a.path < b.path ? -1 : 1))) {
      out.push({
        kind: 'file',
        path: f.path,
        name: f.path.slice(f.path.lastIndexOf('/') + 1),
        depth,
        size: f.size,
        modifiedAt: f.modifiedAt,
      });
    }
  };
  walk(root, '', 0);
  return out;
}

/** Largest file the panel shows inline. */
export const MAX_VIEW_BYTES = 256 * 1024;

const TEXT_NAMES =
  /\.(txt|md|markdown|json|jsonl|csv|tsv|ts|tsx|js|jsx|mjs|cjs|py|rb|go|rs|java|c|h|cpp|hpp|cs|sh|bash|yml|yaml|toml|ini|cfg|conf|html|htm|css|scss|xml|svg|sql|log|diff|patch|env\.example)$|(^|\/)(Makefile|Dockerfile|LICENSE|README|\.gitignore)$/i;

/** Whether the panel offers to show the file as text (by name and size; the content is escaped). */
export function viewable(path: string, size: number): boolean {
  return size <= MAX_VIEW_BYTES && TEXT_NAMES.test(path);
}

/** Where an uploaded file goes: into `folder` (may be empty) under its own name. */
export function uploadPath(folder: string, name: string): string {
  const f = folder.trim().replace(/^\/+|\/+$/g, '');
  return f === '' ? name : `${f}/${name}`;
}

/**
 * Splits chosen files by the server's per-file limit (`maxFileBytes` from /api/settings; null while
 * unknown, when the server's 413 is the only check), so a file that cannot be stored is never sent.
 */
export function byFileLimit<F extends { name: string; size: number }>(
  files: F[],
  maxBytes: number | null,
): { fit: F[]; tooLarge: F[] } {
  if (maxBytes === null) return { fit: files, tooLarge: [] };
  return { fit: files.filter((f) => f.size <= maxBytes), tooLarge: files.filter((f) => f.size > maxBytes) };
}

/**
 * What the panel says about files left out for their size: each named with its size, then the
 * limit; in exact bytes when rounding would show a file the same size as the limit.
 */
export function tooLargeMessage(tooLarge: Array<{ name: string; size: number }>, maxBytes: number): string {
  const rounded = tooLarge.every((f) => formatBytes(f.size) !== formatBytes(maxBytes));
  const size = (n: number) => (rounded ? formatBytes(n) : `${n.toLocaleString('en-US')} bytes`);
  const named = tooLarge.map((f) => `${f.name} (${size(f.size)})`).join(', ');
  const verb = tooLarge.length === 1 ? 'is' : 'are';
  return `Not uploaded: ${named} ${verb} over the ${size(maxBytes)} limit per file.`;
}
