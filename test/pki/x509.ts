import './reflect-shim';
export * from '@peculiar/x509';
