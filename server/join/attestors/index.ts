import { discoveryAttestor } from './discovery/discovery';
import { joinTokenAttestor } from './join-token/join-token';
import { registerAttestor } from './registry';
import { tpmAttestor } from './tpm/attestor';
import { x509popAttestor } from './x509pop/x509pop';

export {
  attestorNamed,
  checkRenewal,
  isKnownAttestor,
  registerAttestor,
  renewalLife,
  requestFieldsOf,
  siteSettingsOf,
  unregisterAttestor,
  updatedSiteSettings,
} from './registry';

// The attestors this server runs: the one place they are listed. Adding one is one line here.
registerAttestor(joinTokenAttestor);
registerAttestor(discoveryAttestor);
registerAttestor(tpmAttestor);
registerAttestor(x509popAttestor);
