/**
 * A parent for the gateway process, as main.ts is one: starts it with startGatewayProcess on
 * BETTER_COMPUTE_GATEWAY_DIR and BETTER_COMPUTE_GATEWAY_PORT and runs until it is killed. Started with
 * `node --import tsx test/gateway-parent.ts` by server/boot/dev-gateway.test.ts.
 */
import { startGatewayProcess } from '../server/boot/dev-gateway';

startGatewayProcess({
  dir: process.env.BETTER_COMPUTE_GATEWAY_DIR!,
  port: Number(process.env.BETTER_COMPUTE_GATEWAY_PORT),
  apiUrl: 'http://127.0.0.1:9',
  say: (line) => process.stderr.write(`${line}\n`),
});
setInterval(() => {}, 60_000);
