// The tpm attestor's settings live in protocol/ (pool and site schemas share them with the console).
export {
  editAllowList,
  ekHashSchema,
  MAX_EK_ALLOW_LIST,
  tpmPoolPolicySchema,
  tpmSiteSettings,
  type TpmSiteSettings,
} from '../../../../protocol/api/tpm-settings';
