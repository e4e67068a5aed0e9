// node:path for the check programs in a page: POSIX joins of the virtual paths of shims/fs.js.
export const join = (...parts) => parts.join("/").replace(/\/+/g, "/");
export const dirname = (path) => path.slice(0, path.lastIndexOf("/")) || "/";
