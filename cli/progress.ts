/** A progress bar on stderr: redrawn in place on a terminal, a line per 10% otherwise. */
export function progressBar(label: string, total: number) {
  const tty = process.stderr.isTTY;
  let lastDecile = -1;
  const draw = (done: number) => {
    const fraction = total ? done / total : 1;
    if (tty) {
      const width = 30;
      const filled = Math.round(fraction * width);
      process.stderr.write(`\r${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total}`);
    } else {
      const decile = Math.floor(fraction * 10);
      if (decile !== lastDecile) {
        lastDecile = decile;
        process.stderr.write(`${label}: ${done}/${total}\n`);
      }
    }
  };
  return {
    update: draw,
    done: () => {
      draw(total);
      if (tty) process.stderr.write('\n');
    },
  };
}
