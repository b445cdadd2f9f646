export interface Tenant {
  readonly id: string;
  readonly name: string;
  readonly createdBy: string | null;
  readonly createdAt: string;
}
