import { Command, CommanderError } from 'commander';
import { PRODUCT_VERSION } from '../server/config/config';
import { printError } from './errors';
import { registerApiKeyCommands } from './commands/api-keys';
import { registerJoinTokenCommands } from './commands/join-tokens';
import { registerPoolCommands } from './commands/pools';
import { registerSiteCommands } from './commands/sites';
import { registerTenantCommands } from './commands/tenants';
import { registerPkiCommands } from './commands/pki';
import { registerDevCommands } from './commands/dev';
import { registerEventCommands } from './commands/events';
import { registerInvitationCommands, registerOperatorCommands } from './commands/operators';
import { registerAgentCommands } from './commands/agent';
import { registerGatewayCommand } from './commands/gateway';
import { registerNodeCommands } from './commands/nodes';
import { registerAuditCommands } from './commands/audit';
import { registerNodeBulkCommand } from './commands/nodes-bulk';
import { registerNodeRunCommand } from './commands/nodes-run';
import { registerJoinRequestCommands } from './commands/join-requests';
import { registerDiscoveryTokenCommands } from './commands/discovery-tokens';
import { registerSiteTokenCommands } from './commands/site-tokens';
import { registerDaemonCommands } from './commands/daemon';
import { registerApprovalRuleCommands } from './commands/approval-rules';
import { registerExpectedMachineCommands } from './commands/expected-machines';
import { registerWebhookCommands } from './commands/webhooks';
import { registerProvisioningCommands } from './commands/provisioning';

/** The whole command tree, built fresh for each run (commander keeps parsed options on the commands). */
export function createProgram(): Command {
  const program = new Command('better-compute')
    .description('Better Compute: join tokens, nodes and the control plane, from the command line')
    .version(PRODUCT_VERSION)
    .option('--server <url>', 'the server, e.g. http://localhost:3000 (default: $BETTER_COMPUTE_URL)')
    .option('--api-key <key>', 'an API key (default: $BETTER_COMPUTE_API_KEY)')
    .showHelpAfterError()
    .exitOverride();

  registerPkiCommands(program);
  registerTenantCommands(program);
  registerSiteCommands(program);
  registerPoolCommands(program);
  registerJoinTokenCommands(program);
  registerApiKeyCommands(program);
  registerEventCommands(program);
  registerOperatorCommands(program);
  registerInvitationCommands(program);
  registerDevCommands(program);
  registerNodeCommands(program);
  registerAuditCommands(program);
  registerNodeBulkCommand(program.commands.find((c) => c.name() === 'nodes')!);
  registerNodeRunCommand(program.commands.find((c) => c.name() === 'nodes')!);
  registerGatewayCommand(program);
  registerAgentCommands(program);
  registerJoinRequestCommands(program);
  registerWebhookCommands(program);
  registerDiscoveryTokenCommands(program);
  registerSiteTokenCommands(program);
  registerProvisioningCommands(program);
  registerDaemonCommands(program);
  registerApprovalRuleCommands(program);
  registerExpectedMachineCommands(program);
  return program;
}

/**
 * Runs one command line (`argv` as in `process.argv`, the first two entries skipped) and answers its exit
 * code: 0, 2 for usage errors (already printed by commander), else the error table's code after one line on
 * stderr. cli/main.ts exits with it; tests call this in process.
 */
export async function runProgram(argv: string[]): Promise<number> {
  try {
    await createProgram().parseAsync(argv);
    return 0;
  } catch (error) {
    // Help and version exit 0; usage errors exit 2, like INVALID_ARGUMENT.
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    return printError(error);
  }
}
