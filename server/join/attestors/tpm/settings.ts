// The tpm attestor's settings live in protocol/ (pool and site schemas share them with the console).
export { editAllowList, tpmSiteSettings, type TpmSiteSettings } from '../../../../protocol/api/tpm-settings';
