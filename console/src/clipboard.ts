// Copying a secret or a snippet. navigator.clipboard only exists in secure contexts (https or
// localhost); a gateway reached over plain http on a LAN falls back to selecting
// the text and the older execCommand('copy').

export async function copyFromInput(input: HTMLInputElement): Promise<boolean> {
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(input.value);
      return true;
    } catch {
      // Permission refused or no user activation: try the selection route.
    }
  }
  return copyBySelection(input);
}

function copyBySelection(input: HTMLInputElement): boolean {
  input.focus();
  input.select();
  input.setSelectionRange(0, input.value.length);
  try {
    return document.execCommand('copy');
  } catch {
    return false;
  }
}

/** Copies `text`; without the clipboard API, selects `shown` (the element showing it) and copies that. */
export async function copyText(text: string, shown: HTMLElement): Promise<boolean> {
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      // As above: fall back to the selection.
    }
  }
  const selection = window.getSelection();
  if (selection === null) return false;
  const range = document.createRange();
  range.selectNodeContents(shown);
  selection.removeAllRanges();
  selection.addRange(range);
  try {
    return document.execCommand('copy');
  } catch {
    return false;
  }
}
