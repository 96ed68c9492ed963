// Narrow accessors for CLI lines. The codecs read a few fields off parsed JSON
// on the hot path; a full zod parse of every stream line would cost more than
// the JSON.parse itself (see bench/protocol), so each field is checked here.

export type Obj = Record<string, unknown>;

export function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
export function str(o: Obj, key: string): string | undefined {
  const v = o[key];
  return typeof v === 'string' ? v : undefined;
}
export function num(o: Obj, key: string): number | undefined {
  const v = o[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}
export function obj(o: Obj, key: string): Obj | undefined {
  const v = o[key];
  return isObj(v) ? v : undefined;
}
export function arr(o: Obj, key: string): unknown[] | undefined {
  const v = o[key];
  return Array.isArray(v) ? v : undefined;
}

/** First line of a text, capped, for error messages built from CLI output. */
export function head(text: string, max = 300): string {
  const first = text.trim().split('\n', 1)[0] ?? '';
  return first.length > max ? `${first.slice(0, max)}…` : first;
}

export function nonNegInt(v: number | undefined): number {
  return v !== undefined && v >= 0 ? Math.floor(v) : 0;
}
