import { useEffect, useId, useRef, type ReactNode } from 'react';

/**
 * A modal on the browser's own <dialog>: focus moves in and stays in,
 * Escape and a click outside close it, the rest of the page is inert.
 */
export function Dialog({ title, onClose, children, actions }: { title: ReactNode; onClose: () => void; children: ReactNode; actions: ReactNode }) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    // Unmounting removes it from the page, which ends the modal state too.
    if (dialog && !dialog.open) dialog.showModal();
  }, []);
  return (
    <dialog
      ref={ref}
      className="cc-dialog"
      aria-labelledby={titleId}
      onClose={onClose}
      onClick={(event) => {
        // A click on the dialog element itself (not its content) is a click on the backdrop.
        if (event.target === ref.current) ref.current.close();
      }}
    >
      <div className="cc-dialog__body">
        <h2 id={titleId} className="cc-dialog__title">
          {title}
        </h2>
        <div className="cc-dialog__content">{children}</div>
        <div className="cc-dialog__actions">{actions}</div>
      </div>
    </dialog>
  );
}
