export * from './errors.js';
export * from './ggml-types.js';
export * from './value-types.js';
export * from './reader.js';
export * from './writer.js';
