// The better-compute command line: the program (cli/program.ts) run on this process's arguments, exiting
// only once stdout and stderr are fully written (a piped `--json` answer must not be cut).
import { runProgram } from './program';
import { exitWhenFlushed } from './exit';

await exitWhenFlushed(await runProgram(process.argv));
