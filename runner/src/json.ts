/** The JSON value `text` holds, or undefined when it is not JSON (the caller validates the shape). */
export function jsonValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
