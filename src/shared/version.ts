/** Kept in step with package.json by a unit test (reading package.json at run time would cost a file read per CLI start). */
export const KILN_VERSION = '0.1.0';
