/** The listener's version (package.json's; `version.test.ts` keeps the two equal). */
export const VERSION = '0.1.0';
