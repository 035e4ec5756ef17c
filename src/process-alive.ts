/**
 * Whether a process with this id is running: signal 0 checks without delivering anything, and
 * EPERM means it runs as another user (alive, just not ours to signal).
 */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
