// The byte encodings live in protocol (shared with the runner side); randomBytes is the edge's.
export { fromBase64, fromBase64Url, toBase64, toBase64Url, toHex } from '@switchyard/protocol';

export function randomBytes(n: number): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(n));
}
