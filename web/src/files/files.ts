// Pure helpers of the files panel: URLs for workspace paths, the folder tree, which files can be
// shown as text. Paths are checked by the server; here they are only encoded and arranged.

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
