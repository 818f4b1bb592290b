/**
 * @peculiar/x509 2.x loads tsyringe, which throws at import unless `Reflect.getMetadata` exists, and
 * `reflect-metadata` is not a dependency here. The tests only parse certificates with it, which needs no real
 * metadata, so this installs the three functions tsyringe calls. Test-only: production code in server/pki does not
 * import @peculiar/x509 at all.
 */
const reflect = Reflect as unknown as {
  getMetadata?: (key: unknown, target: object) => unknown;
  getOwnMetadata?: (key: unknown, target: object) => unknown;
  defineMetadata?: (key: unknown, value: unknown, target: object) => void;
};
if (typeof reflect.getMetadata !== 'function') {
  const store = new WeakMap<object, Map<unknown, unknown>>();
  reflect.defineMetadata = (key, value, target) => {
    const map = store.get(target) ?? new Map<unknown, unknown>();
    map.set(key, value);
    store.set(target, map);
  };
  reflect.getOwnMetadata = (key, target) => store.get(target)?.get(key);
  reflect.getMetadata = (key, target) => {
    for (let t: object | null = target; t; t = Object.getPrototypeOf(t)) {
      if (store.get(t)?.has(key)) return store.get(t)?.get(key);
    }
    return undefined;
  };
}
export {};
