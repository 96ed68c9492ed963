/** Cryptographically random bytes (token secrets, salts). Byte encodings are in @switchyard/protocol. */
export function randomBytes(n: number): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(n));
}
