// A figure drawn smaller than its pixels opens at full size when clicked.
window.addEventListener("load", () => {
  document.querySelectorAll("article img").forEach((img) => {
    if (img.closest("a") || img.naturalWidth <= img.clientWidth * 1.15) return;
    const link = document.createElement("a");
    link.href = img.currentSrc || img.src;
    link.title = "Open the figure at full size";
    link.className = "predcalc-zoom";
    img.parentNode.insertBefore(link, img);
    link.appendChild(img);
  });
});
