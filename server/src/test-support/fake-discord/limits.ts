/**
 * The limits Discord's API enforces on what a bot sends, as the fake checks
 * them: message content, components, modals and application commands. A
 * breach is answered the way Discord answers it — 400 "Invalid Form Body"
 * (code 50035) with an `errors` tree naming the field — so a bot that trips
 * on a limit here trips on it in production too.
 */

export const LIMITS = {
  content: 2000,
  customId: 100,
  buttonsPerRow: 5,
  rowsPerMessage: 5,
  buttonLabel: 80,
  modalTitle: 45,
  modalComponents: 5,
  label: 45,
  labelDescription: 100,
  placeholder: 100,
  textInputLength: 4000,
  commandName: 32,
  commandDescription: 100,
  commandOptions: 25,
  commandsPerApplication: 100,
  stringOptionLength: 6000,
  embeds: 10,
} as const;

/** Message flags a bot may set when it sends or edits a message. */
const SENDABLE_FLAGS = 4 /* SUPPRESS_EMBEDS */ | 64 /* EPHEMERAL */ | 4096 /* SUPPRESS_NOTIFICATIONS */;

export interface FieldError {
  code: string;
  message: string;
}

/** Collects field errors by path and renders them as Discord's nested `errors` object. */
export class FormErrors {
  readonly #errors: { path: (string | number)[]; error: FieldError }[] = [];

  add(path: (string | number)[], code: string, message: string): void {
    this.#errors.push({ path, error: { code, message } });
  }

  get empty(): boolean {
    return this.#errors.length === 0;
  }

  /** The paths at fault, dotted (`components.0.components`), for tests and logs. */
  get paths(): string[] {
    return this.#errors.map(({ path }) => path.join('.'));
  }

  toJSON(): Record<string, unknown> {
    const root: Record<string, unknown> = {};
    for (const { path, error } of this.#errors) {
      let node = root;
      for (const key of path) node = (node[String(key)] ??= {}) as Record<string, unknown>;
      ((node._errors ??= []) as FieldError[]).push(error);
    }
    return root;
  }
}

const lengthError = (errors: FormErrors, path: (string | number)[], value: unknown, min: number, max: number) => {
  if (typeof value !== 'string') {
    errors.add(path, 'BASE_TYPE_REQUIRED', 'This field is required');
    return;
  }
  const length = [...value].length;
  if (length < min || length > max) {
    errors.add(
      path,
      min === 0 ? 'BASE_TYPE_MAX_LENGTH' : 'BASE_TYPE_BAD_LENGTH',
      min === 0 ? `Must be ${max} or fewer in length.` : `Must be between ${min} and ${max} in length.`,
    );
  }
};

const optionalLength = (errors: FormErrors, path: (string | number)[], value: unknown, min: number, max: number) => {
  if (value !== undefined && value !== null) lengthError(errors, path, value, min, max);
};

const numberBetween = (errors: FormErrors, path: (string | number)[], value: unknown, min: number, max: number) => {
  if (value === undefined || value === null) return;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    errors.add(path, 'NUMBER_TYPE_MIN', `int value should be between ${min} and ${max}.`);
  }
};

type Json = Record<string, unknown>;
const asObject = (value: unknown): Json => (value && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {});
const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** Buttons and select menus of a message: action rows of at most five buttons, ids unique and at most 100 characters. */
function checkMessageComponents(errors: FormErrors, components: unknown): void {
  if (components === undefined || components === null) return;
  if (!Array.isArray(components)) {
    errors.add(['components'], 'LIST_TYPE_CONVERT', 'Only iterables may be used in a ListType');
    return;
  }
  if (components.length > LIMITS.rowsPerMessage) errors.add(['components'], 'BASE_TYPE_BAD_LENGTH', `Must be between 0 and ${LIMITS.rowsPerMessage} in length.`);
  const seen = new Set<string>();
  components.forEach((row, rowIndex) => {
    const rowObject = asObject(row);
    if (rowObject.type !== 1) {
      errors.add(['components', rowIndex, 'type'], 'UNION_TYPE_CHOICES', 'Value of field "type" must be one of (1,).');
      return;
    }
    const children = asArray(rowObject.components);
    if (children.length < 1 || children.length > LIMITS.buttonsPerRow) {
      errors.add(['components', rowIndex, 'components'], 'BASE_TYPE_BAD_LENGTH', `Must be between 1 and ${LIMITS.buttonsPerRow} in length.`);
    }
    children.forEach((child, childIndex) => {
      const path = ['components', rowIndex, 'components', childIndex];
      const component = asObject(child);
      if (component.type !== 2) return; // select menus are not used by the bot
      const style = component.style;
      if (typeof style !== 'number' || style < 1 || style > 6) errors.add([...path, 'style'], 'BUTTON_COMPONENT_INVALID_STYLE', 'Invalid button style.');
      optionalLength(errors, [...path, 'label'], component.label, 0, LIMITS.buttonLabel);
      if (style === 5) {
        if (typeof component.url !== 'string') errors.add([...path, 'url'], 'BUTTON_COMPONENT_URL_REQUIRED', 'A URL is required');
      } else if (style !== 6) {
        lengthError(errors, [...path, 'custom_id'], component.custom_id, 1, LIMITS.customId);
        if (typeof component.custom_id === 'string') {
          if (seen.has(component.custom_id)) errors.add([...path, 'custom_id'], 'COMPONENT_CUSTOM_ID_DUPLICATED', 'Component custom id cannot be duplicated');
          seen.add(component.custom_id);
        }
      }
      if (component.label === undefined && component.emoji === undefined) errors.add([...path], 'BUTTON_COMPONENT_LABEL_OR_EMOJI_REQUIRED', 'A label or an emoji is required');
    });
  });
}

/**
 * A message body (channel message, interaction response, webhook follow-up
 * or edit). Returns the form errors; `empty` tells a message with nothing in
 * it (50006), which Discord reports apart from form errors.
 */
export function checkMessage(body: unknown, options: { edit?: boolean } = {}): { errors: FormErrors; empty: boolean } {
  const errors = new FormErrors();
  const message = asObject(body);
  if (message.content !== undefined && message.content !== null) {
    if (typeof message.content !== 'string') errors.add(['content'], 'BASE_TYPE_STRING', 'Must be a string.');
    else if ([...message.content].length > LIMITS.content) errors.add(['content'], 'BASE_TYPE_MAX_LENGTH', `Must be ${LIMITS.content} or fewer in length.`);
  }
  checkMessageComponents(errors, message.components);
  const embeds = message.embeds;
  if (Array.isArray(embeds)) {
    if (embeds.length > LIMITS.embeds) errors.add(['embeds'], 'BASE_TYPE_MAX_LENGTH', `Must be ${LIMITS.embeds} or fewer in length.`);
    embeds.forEach((embed, index) => optionalLength(errors, ['embeds', index, 'description'], asObject(embed).description, 0, 4096));
  }
  if (message.flags !== undefined && message.flags !== null) {
    const flags = Number(message.flags);
    if (!Number.isInteger(flags) || (flags & ~SENDABLE_FLAGS) !== 0) errors.add(['flags'], 'MESSAGE_FLAGS_INVALID', 'Invalid message flags');
  }
  const hasContent = typeof message.content === 'string' && message.content.trim().length > 0;
  const hasEmbeds = asArray(message.embeds).length > 0;
  const hasComponents = asArray(message.components).length > 0;
  const hasFiles = asArray(message.attachments).length > 0 || asArray(message.sticker_ids).length > 0;
  // An edit that leaves a field out keeps what the message had; only a new message must carry something.
  const empty = !options.edit && !hasContent && !hasEmbeds && !hasComponents && !hasFiles;
  return { errors, empty };
}

/** A modal (interaction response type 9): title, 1–5 components, each a text input in an action row or a label. */
export function checkModal(data: unknown): FormErrors {
  const errors = new FormErrors();
  const modal = asObject(data);
  lengthError(errors, ['data', 'custom_id'], modal.custom_id, 1, LIMITS.customId);
  lengthError(errors, ['data', 'title'], modal.title, 1, LIMITS.modalTitle);
  const components = asArray(modal.components);
  if (components.length < 1 || components.length > LIMITS.modalComponents) {
    errors.add(['data', 'components'], 'BASE_TYPE_BAD_LENGTH', `Must be between 1 and ${LIMITS.modalComponents} in length.`);
  }
  const checkTextInput = (path: (string | number)[], input: Json, labelled: boolean) => {
    if (input.type !== 4) {
      errors.add([...path, 'type'], 'UNION_TYPE_CHOICES', 'Value of field "type" must be one of (4,).');
      return;
    }
    lengthError(errors, [...path, 'custom_id'], input.custom_id, 1, LIMITS.customId);
    if (input.style !== 1 && input.style !== 2) errors.add([...path, 'style'], 'BASE_TYPE_CHOICES', 'Value must be one of {1, 2}.');
    // In an action row the text input carries its own label; inside a label component it must not.
    if (labelled) {
      if (input.label !== undefined) errors.add([...path, 'label'], 'TEXT_INPUT_LABEL_NOT_ALLOWED', 'A text input inside a label cannot have a label');
    } else {
      lengthError(errors, [...path, 'label'], input.label, 1, LIMITS.label);
    }
    optionalLength(errors, [...path, 'placeholder'], input.placeholder, 0, LIMITS.placeholder);
    optionalLength(errors, [...path, 'value'], input.value, 0, LIMITS.textInputLength);
    numberBetween(errors, [...path, 'min_length'], input.min_length, 0, LIMITS.textInputLength);
    numberBetween(errors, [...path, 'max_length'], input.max_length, 1, LIMITS.textInputLength);
    if (typeof input.min_length === 'number' && typeof input.max_length === 'number' && input.min_length > input.max_length) {
      errors.add([...path, 'min_length'], 'TEXT_INPUT_MIN_GREATER_THAN_MAX', 'min_length must not exceed max_length');
    }
  };
  components.forEach((child, index) => {
    const path = ['data', 'components', index];
    const component = asObject(child);
    if (component.type === 1) {
      const inputs = asArray(component.components);
      if (inputs.length !== 1) errors.add([...path, 'components'], 'BASE_TYPE_BAD_LENGTH', 'Must be between 1 and 1 in length.');
      inputs.forEach((input, inputIndex) => checkTextInput([...path, 'components', inputIndex], asObject(input), false));
    } else if (component.type === 18) {
      lengthError(errors, [...path, 'label'], component.label, 1, LIMITS.label);
      optionalLength(errors, [...path, 'description'], component.description, 0, LIMITS.labelDescription);
      checkTextInput([...path, 'component'], asObject(component.component), true);
    } else if (component.type !== 10) {
      errors.add([...path, 'type'], 'UNION_TYPE_CHOICES', 'Value of field "type" must be one of (1, 10, 18).');
    }
  });
  return errors;
}

const COMMAND_NAME = /^[-_'\p{Ll}\p{Lo}\p{N}\p{sc=Deva}\p{sc=Thai}]{1,32}$/u;

/** A bulk overwrite of application commands: names, descriptions of 1–100 characters, options and their lengths. */
export function checkCommands(body: unknown): FormErrors {
  const errors = new FormErrors();
  if (!Array.isArray(body)) {
    errors.add([], 'LIST_TYPE_CONVERT', 'Only iterables may be used in a ListType');
    return errors;
  }
  if (body.length > LIMITS.commandsPerApplication) errors.add([], 'BASE_TYPE_MAX_LENGTH', `Must be ${LIMITS.commandsPerApplication} or fewer in length.`);
  const names = new Set<string>();
  body.forEach((raw, index) => {
    const command = asObject(raw);
    const type = command.type ?? 1;
    if (typeof command.name !== 'string' || !COMMAND_NAME.test(command.name)) {
      errors.add([index, 'name'], 'APPLICATION_COMMAND_INVALID_NAME', 'Command name is invalid');
    } else if (names.has(`${type}:${command.name}`)) {
      errors.add([index, 'name'], 'APPLICATION_COMMANDS_DUPLICATE_NAME', 'Application command names must be unique');
    } else {
      names.add(`${type}:${command.name}`);
    }
    if (type === 1) lengthError(errors, [index, 'description'], command.description, 1, LIMITS.commandDescription);
    const options = asArray(command.options);
    if (options.length > LIMITS.commandOptions) errors.add([index, 'options'], 'BASE_TYPE_MAX_LENGTH', `Must be ${LIMITS.commandOptions} or fewer in length.`);
    options.forEach((rawOption, optionIndex) => {
      const option = asObject(rawOption);
      const path = [index, 'options', optionIndex];
      if (typeof option.name !== 'string' || !COMMAND_NAME.test(option.name)) errors.add([...path, 'name'], 'APPLICATION_COMMAND_INVALID_NAME', 'Command name is invalid');
      lengthError(errors, [...path, 'description'], option.description, 1, LIMITS.commandDescription);
      if (option.type === 3) {
        numberBetween(errors, [...path, 'min_length'], option.min_length, 0, LIMITS.stringOptionLength);
        numberBetween(errors, [...path, 'max_length'], option.max_length, 1, LIMITS.stringOptionLength);
      }
    });
  });
  return errors;
}
