// zkplatform-client/key-directory in Node: the directory and its state in a file.
export * from "./key-directory.js";
export { FileKeyLogStore } from "./key-log-file.js";
