// The answer of GET /instances/:id/update-plan, shared by the orchestrator that
// computes it and ectl that prints it. `Image` is how each side sees an image:
// the orchestrator has the full inspection, ectl reads only its ref and id.

export interface UpdatePlanAnswer<Image = { ref: string; id?: string }> {
  instanceId: string;
  name: string;
  state: string;
  current: Image;
  candidate: Image;
  sameImage: boolean;
  compatible: boolean;
  checks: { name: string; ok: boolean; detail: string }[];
  changes: string[];
  warnings: string[];
  diskFreeBytes: number | null;
}
