if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
if true; then
export A=1
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi
fi

