/**
 * `npm start` (and, with `--dev`, `npm run dev`): the whole product (server/boot/start.ts). `--dev` serves the
 * console with Next's development server instead of the production build, in one process.
 */
import { runServerProcess } from './start';

runServerProcess({ dev: process.argv.includes('--dev') });
