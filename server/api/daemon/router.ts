import { requirePermission, router } from '../trpc';
import { generateInstallScript } from '../../daemon/generate';
import { installScriptInput, installScriptOutput } from '../../../protocol/api/daemon-schemas';
import { downloadsDir } from '../../downloads/serve';

export const daemonRouter = router({
  // A query in spirit (it writes nothing), a mutation on the wire so the digests travel in a body.
  installScript: requirePermission('compute:pools:read')
    .input(installScriptInput)
    .output(installScriptOutput)
    .mutation(({ ctx, input }) => generateInstallScript(ctx.db, ctx.principal, input, downloadsDir(process.cwd()))),
});
