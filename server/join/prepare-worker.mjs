// Entry of a join preparation thread: registers the TypeScript loader in this thread (hooks of the main
// thread do not reach workers on Node 20), then runs prepare-worker.ts.
import { register } from 'tsx/esm/api';

register();
await import('./prepare-worker.ts');
