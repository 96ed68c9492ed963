export * from './backend.ts';
