// A session's artifacts: every version's metadata, a preview (text or image) and a download,
// fetched with the key like any other call (a plain link could not send it).

import { send, sessionPath } from "./api.js";
import { h, fill, when } from "./dom.js";
import { report } from "./ui.js";

const PREVIEW_BYTES = 64 * 1024;

function isText(mime) {
  return !mime || mime.startsWith("text/") || /json|xml|yaml|csv/.test(mime);
}

function contentPath(scope, name, version) {
  return `${sessionPath(scope.app, scope.user, scope.sid)}/artifacts/${encodeURIComponent(name)}/versions/${version}/content`;
}

async function blobOf(scope, name, version) {
  const response = await send(contentPath(scope, name, version), { signal: scope.signal });
  return response.blob();
}

function urlFor(scope, blob) {
  const url = URL.createObjectURL(blob);
  scope.signal.addEventListener("abort", () => URL.revokeObjectURL(url), { once: true });
  return url;
}

async function preview(scope, name, meta, target) {
  const blob = await blobOf(scope, name, meta.version);
  const mime = meta.mimeType || blob.type;
  const label = h("p", { class: "muted" }, `Preview of ${name}, version ${meta.version}`);
  if (mime && mime.startsWith("image/")) {
    fill(target, label, h("img", { src: urlFor(scope, blob), alt: `${name}, version ${meta.version}` }));
  } else if (isText(mime)) {
    const text = await blob.slice(0, PREVIEW_BYTES).text();
    const cut = blob.size > PREVIEW_BYTES ? h("p", { class: "muted" }, "(first 64 KiB)") : null;
    fill(target, label, h("pre", { class: "artifact-text" }, text), cut);
  } else {
    fill(target, label, h("p", {}, `No preview for ${mime}.`));
  }
}

async function download(scope, name, version) {
  const blob = await blobOf(scope, name, version);
  const link = h("a", { href: urlFor(scope, blob), download: name.replace(/^user:/, "") });
  document.body.append(link);
  link.click();
  link.remove();
}

function guarded(action) {
  return async () => {
    try {
      await action();
    } catch (error) {
      report(error);
    }
  };
}

function artifactBlock(scope, name, versions) {
  const target = h("div", { class: "preview" });
  const newest = [...versions].sort((a, b) => b.version - a.version);
  const rows = newest.map((meta) =>
    h(
      "li",
      { dataset: { version: String(meta.version) } },
      h("span", {}, `version ${meta.version}`),
      h("span", { class: "muted" }, ` · ${meta.mimeType || "text"} · ${meta.size} bytes · ${when(meta.createTime)} `),
      h("span", { class: "buttons" },
        h("button", { type: "button", class: "secondary small", onclick: guarded(() => preview(scope, name, meta, target)) }, `Preview v${meta.version}`),
        h("button", { type: "button", class: "secondary small", onclick: guarded(() => download(scope, name, meta.version)) }, `Download v${meta.version}`),
      ),
    ),
  );
  const block = h("div", { class: "artifact", dataset: { name } }, h("h3", {}, name), h("ul", { class: "versions" }, rows), target);
  if (newest.length) preview(scope, name, newest[0], target).catch(report);
  return block;
}

/** Fills `target` with the session's artifacts, each with its versions and the latest previewed. */
export async function showArtifacts(scope, target) {
  const base = `${sessionPath(scope.app, scope.user, scope.sid)}/artifacts`;
  const names = await (await send(base, { signal: scope.signal })).json();
  if (!names.length) {
    fill(target, h("p", { class: "muted" }, "No artifacts yet."));
    return;
  }
  const blocks = await Promise.all(
    names.map(async (name) => {
      const versions = await (await send(`${base}/${encodeURIComponent(name)}/versions/metadata`, { signal: scope.signal })).json();
      return artifactBlock(scope, name, versions);
    }),
  );
  fill(target, blocks);
}
