// A streaming tar writer (POSIX ustar, with a pax `path` record for names ustar cannot hold),
// for the workspace archive. Regular files only: the durable workspace holds nothing else.
// Pure apart from the streams it is given, so it runs in workerd and in Node.

export interface TarFile {
  path: string;
  size: number;
  executable: boolean;
  /** Milliseconds since the epoch. */
  modifiedAt: number;
  /** Exactly `size` bytes; opened only when the entry is written. */
  open(): Promise<ReadableStream<Uint8Array>>;
}

const BLOCK = 512;
const encoder = new TextEncoder();

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, '0')}\0`;
}

function writeString(buf: Uint8Array, offset: number, width: number, text: string): void {
  buf.set(encoder.encode(text).subarray(0, width), offset);
}

/** One 512-byte header; `name` must fit ustar's 100 bytes (a pax record carries longer ones). */
export function tarHeader(h: {
  name: string;
  size: number;
  mode: number;
  mtimeSeconds: number;
  type: '0' | 'x';
}): Uint8Array {
  const buf = new Uint8Array(BLOCK);
  writeString(buf, 0, 100, h.name);
  writeString(buf, 100, 8, octal(h.mode, 8));
  writeString(buf, 108, 8, octal(0, 8));
  writeString(buf, 116, 8, octal(0, 8));
  writeString(buf, 124, 12, octal(h.size, 12));
  writeString(buf, 136, 12, octal(h.mtimeSeconds, 12));
  writeString(buf, 148, 8, '        ');
  writeString(buf, 156, 1, h.type);
  writeString(buf, 257, 6, 'ustar\0');
  writeString(buf, 263, 2, '00');
  let sum = 0;
  for (const b of buf) sum += b;
  writeString(buf, 148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  return buf;
}

/** A pax extended-header record: `<len> path=<value>\n`, where len counts the whole record. */
export function paxRecord(key: string, value: string): Uint8Array {
  const body = ` ${key}=${value}\n`;
  const bodyBytes = encoder.encode(body).length;
  let len = bodyBytes + 1;
  while (String(len).length + bodyBytes !== len) len = String(len).length + bodyBytes;
  return encoder.encode(`${len}${body}`);
}

function padding(size: number): Uint8Array {
  const rest = size % BLOCK;
  return new Uint8Array(rest === 0 ? 0 : BLOCK - rest);
}

function asciiShort(name: string): boolean {
  return encoder.encode(name).length <= 100 && /^[\x20-\x7e]*$/.test(name);
}

/** The entries as one tar stream (not compressed; pipe through CompressionStream('gzip')). */
export function tarStream(files: AsyncIterable<TarFile> | Iterable<TarFile>): ReadableStream<Uint8Array> {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const run = async () => {
    const writer = writable.getWriter();
    try {
      for await (const f of files) {
        const mtimeSeconds = Math.floor(f.modifiedAt / 1000);
        let name = f.path;
        if (!asciiShort(f.path)) {
          const record = paxRecord('path', f.path);
          await writer.write(
            tarHeader({ name: 'PaxHeader', size: record.length, mode: 0o644, mtimeSeconds, type: 'x' }),
          );
          await writer.write(record);
          await writer.write(padding(record.length));
          // The ustar name is only a fallback for readers without pax.
          name = `pax-${f.path.length}`;
        }
        await writer.write(
          tarHeader({ name, size: f.size, mode: f.executable ? 0o755 : 0o644, mtimeSeconds, type: '0' }),
        );
        let written = 0;
        const reader = (await f.open()).getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          written += value.length;
          if (written > f.size) throw new Error(`${f.path}: content is longer than its ${f.size} bytes`);
          await writer.write(value);
        }
        if (written !== f.size) throw new Error(`${f.path}: content is ${written} bytes, expected ${f.size}`);
        await writer.write(padding(f.size));
      }
      await writer.write(new Uint8Array(BLOCK * 2));
      await writer.close();
    } catch (err) {
      await writer.abort(err);
    }
  };
  void run();
  return readable;
}
