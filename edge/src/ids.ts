import { monotonicFactory } from 'ulid';

// Created lazily: workerd forbids random-number generation during global scope evaluation.
let next: ((seedTime?: number) => string) | undefined;

/** A ULID: sortable by creation time, which is what the audit trail pages by. */
export function newId(now: number): string {
  next ??= monotonicFactory();
  return next(now);
}

export const ULID_PATTERN = /^[0-9A-HJKMNP-TV-Z]{26}$/;
