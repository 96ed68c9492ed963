// Plain constants both sides enforce, kept free of zod so the browser bundle can import them
// without pulling in the schema library.

/** Image types every backend accepts (the Messages API's set). */
export const IMAGE_MEDIA_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const;
export type ImageMediaType = (typeof IMAGE_MEDIA_TYPES)[number];

/** Images one user message may carry. */
export const MAX_IMAGES_PER_MESSAGE = 8;
