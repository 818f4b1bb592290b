import type { Command } from 'commander';
import { runGateway } from '../../server/gateway/main';
import { wholeNumber } from '../options';

export function registerGatewayCommand(program: Command) {
  program
    .command('gateway')
    .description("Run the gateway: the agents' TLS endpoint, relaying join and renew to the API (it holds no JoinService key)")
    .requiredOption(
      '--dir <dir>',
      'directory with chain.pem (leaf, then serving CA), key.pem and node-ca.pem',
      process.env.BETTER_COMPUTE_GATEWAY_DIR,
    )
    .option('--port <port>', 'port to listen on', wholeNumber(1, 65535), Number(process.env.BETTER_COMPUTE_GATEWAY_PORT || 8443))
    .option('--api-url <url>', 'the API it relays to', process.env.BETTER_COMPUTE_GATEWAY_API_URL || 'http://127.0.0.1:3000')
    .action(async (opts: { dir: string; port: number; apiUrl: string }) => {
      const stop = await runGateway({ dir: opts.dir, port: opts.port, apiUrl: opts.apiUrl });
      await new Promise<void>((resolve) => {
        for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => resolve());
      });
      await stop();
    });
}
