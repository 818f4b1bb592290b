// The better-compute command line: the program (cli/program.ts) run on this process's arguments.
import { runProgram } from './program';

process.exit(await runProgram(process.argv));
