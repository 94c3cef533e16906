import { sizeWarning } from '../../model/quorum.js';

describe('sizes that deserve a warning Event', () => {
  it('warns on every even size, naming the failures it tolerates', () => {
    expect(sizeWarning(2, 2)).toBe('size 2 is even: it tolerates 0 failure(s), as 1 members would, and needs more members for every write');
    expect(sizeWarning(4, 3)).toMatch(/size 4 is even: it tolerates 1 failure\(s\), as 3 members would/);
    for (const odd of [3, 5, 7, 9]) expect(sizeWarning(odd, odd)).toBeUndefined();
  });

  it('warns when a cluster of several members is scaled in to one, not when it was created with one', () => {
    expect(sizeWarning(1, 2)).toMatch(/^scaling in to a single member/);
    expect(sizeWarning(1, 1)).toBeUndefined();
    expect(sizeWarning(1, undefined)).toBeUndefined();
  });
});
