export * from './resources.js';
export * from './parse.js';
export * from './envelopes.js';
export * from './json-depth.js';
export * from './ids.js';
export * from './amounts.js';
export * from './accounts.js';
export * from './currency.js';
