/**
 * The node key and its CSR, made in software. The code lives in protocol/node-key.ts, which the gateway also
 * uses for its own serving key's CSR; the agent's modules import it from here.
 */
export { createCsr, generateNodeKeyAndCsr, p256JwkD, p256PrivateKeyFromScalar, type NodeKeyAndCsr } from '../protocol/node-key';
