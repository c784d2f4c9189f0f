// Building the page from data without ever parsing data as markup: every value goes in as text.

/**
 * An element: `h("button", {class: "x", onclick: fn, disabled: true}, "Send")`. Attributes named
 * on* become listeners; `dataset` is an object; false/null/undefined attributes are left out;
 * children are nodes, strings (text nodes) or arrays of them.
 */
export function h(tag, attrs = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else if (name === "dataset") {
      Object.assign(element.dataset, value);
    } else if (name === "class") {
      element.className = value;
    } else if (name === "for") {
      element.htmlFor = value;
    } else if (name === "value") {
      element.value = value;
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(element, children);
  return element;
}

/** Appends children (nodes, text, nested arrays; null and false skipped). */
export function append(parent, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

/** Replaces an element's children. */
export function fill(parent, ...children) {
  parent.replaceChildren();
  return append(parent, children);
}

/** JSON as indented text. */
export function pretty(value) {
  return JSON.stringify(value, null, 2);
}

/** A Unix time (seconds) as local date and time. */
export function when(seconds) {
  if (!seconds) return "";
  return new Date(seconds * 1000).toLocaleString(undefined, {
    dateStyle: "short",
    timeStyle: "medium",
  });
}

/** A status as text with a styled badge; the word carries the meaning, colour only repeats it. */
export function badge(status) {
  return h("span", { class: `badge status-${status}` }, status);
}
