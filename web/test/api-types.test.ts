import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { API_TYPES_FILE, generateApiTypes } from '../scripts/api-types.ts';

it('the web client’s API types match the edge’s OpenAPI document (run `npm run web:api` when this fails)', async () => {
  expect(readFileSync(API_TYPES_FILE, 'utf8')).toBe(await generateApiTypes());
}, 60_000);
