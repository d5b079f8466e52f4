// The storage interface: the domain talks to this, and each database has an adapter behind it.
export const petStatuses = ['available', 'pending', 'sold'];
//# sourceMappingURL=store.js.map