// The `process` of the check programs in a page (esbuild --inject): their command line, as
// globalThis.__argv, and no environment.
export const process = { get argv() { return globalThis.__argv; }, env: {} };
