// The Content-Type a workspace file is served with, from its name. Only types a browser will not
// run as a page from our origin: markup (html, svg, xml) and scripts are served as text/plain,
// and everything unknown as application/octet-stream. Downloads are attachments as well.

const TYPES: Record<string, string> = {
  txt: 'text/plain; charset=utf-8',
  md: 'text/markdown; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  json: 'application/json',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  pdf: 'application/pdf',
  zip: 'application/zip',
  gz: 'application/gzip',
  tar: 'application/x-tar',
};

/** Source and markup: readable as text, never interpreted. */
const AS_TEXT = new Set([
  'html',
  'htm',
  'xhtml',
  'svg',
  'xml',
  'js',
  'mjs',
  'cjs',
  'ts',
  'tsx',
  'jsx',
  'css',
  'py',
  'rb',
  'go',
  'rs',
  'java',
  'c',
  'h',
  'cpp',
  'sh',
  'yml',
  'yaml',
  'toml',
  'ini',
  'log',
]);

export function contentTypeFor(path: string): string {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const dot = name.lastIndexOf('.');
  const ext = dot <= 0 ? '' : name.slice(dot + 1).toLowerCase();
  if (AS_TEXT.has(ext)) return 'text/plain; charset=utf-8';
  return TYPES[ext] ?? 'application/octet-stream';
}

/** `attachment` with the base name, RFC 6266 style (an ASCII fallback plus filename*). */
export function attachmentDisposition(path: string): string {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}
