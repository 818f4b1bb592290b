#!/usr/bin/env node
// The better-compute CLI. It runs the TypeScript sources through tsx, so a checkout needs no build step.
import { register } from 'tsx/esm/api';

register();
await import('../cli/main.ts');
