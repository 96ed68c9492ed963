// Images attached to a message, checked against the API's limits before anything is uploaded.
import { IMAGE_MEDIA_TYPES, type ImageMediaType, MAX_IMAGES_PER_MESSAGE } from '@switchyard/protocol/limits';
import { formatBytes } from '../ui/format.ts';

export interface Attachment {
  id: string;
  name: string;
  mediaType: ImageMediaType;
  /** base64, no data: prefix — what the API takes */
  data: string;
  previewUrl: string;
}

function isAcceptedType(type: string): type is ImageMediaType {
  return (IMAGE_MEDIA_TYPES as readonly string[]).includes(type);
}

/** Bytes the JSON body will have: the text, each image's base64, and a little framing. */
export function bodyBytes(text: string, images: readonly { data: string }[]): number {
  return (
    new TextEncoder().encode(JSON.stringify(text)).byteLength + images.reduce((n, i) => n + i.data.length + 64, 0) + 128
  );
}

/** Why these files cannot be added, or null. Pure: sizes and types only. */
export function checkFiles(
  files: readonly { name: string; type: string; size: number }[],
  current: number,
  budgetBytes: number,
): string | null {
  for (const f of files) {
    if (!isAcceptedType(f.type))
      return `${f.name}: only ${IMAGE_MEDIA_TYPES.map((t) => t.replace('image/', '').toUpperCase()).join(', ')} images can be sent`;
  }
  if (current + files.length > MAX_IMAGES_PER_MESSAGE) return `at most ${MAX_IMAGES_PER_MESSAGE} images per message`;
  const total = files.reduce((n, f) => n + Math.ceil(f.size / 3) * 4, 0);
  if (total > budgetBytes)
    return `images too large: ${formatBytes(total)} encoded, the limit for a message is ${formatBytes(budgetBytes)}`;
  return null;
}

export async function readAttachment(file: File): Promise<Attachment> {
  const buf = new Uint8Array(await file.arrayBuffer());
  let bin = '';
  for (let i = 0; i < buf.length; i += 0x8000) bin += String.fromCharCode(...buf.subarray(i, i + 0x8000));
  return {
    id: crypto.randomUUID(),
    name: file.name || 'pasted image',
    mediaType: file.type as ImageMediaType,
    data: btoa(bin),
    previewUrl: URL.createObjectURL(file),
  };
}
